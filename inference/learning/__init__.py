"""Publication-time learning: what a release learns from its validated examples when it is published
(the release encoder, ``encoder_finetune``; the distilled label classifier, ``classifier``)."""
