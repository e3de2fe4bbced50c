"""Training and distillation of the motion models."""
