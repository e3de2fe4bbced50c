"""Training data that talkhead makes itself: sentences, speech, target motion."""
