"""talkhead: a face photo and speech in, a talking-head video out."""

__version__ = "0.1.0"
