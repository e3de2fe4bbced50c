"""Personal avatars: a person's own video learnt, its mouths banked, rendered and reenacted."""
