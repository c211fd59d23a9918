"""The offline loop measured on real utterances (issue 25): CLINC150 worlds with planted defects."""
