"""Adapters that let a trainer use Creditlab as its advantage estimator."""
