"""The seeded hidden-domain simulation of the offline loop (``manage.py simulate_offline``)."""
