"""The bootstrap folder: put on ``PYTHONPATH`` so its ``sitecustomize`` runs in every process."""
