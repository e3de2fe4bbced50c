"""The live server: ``LiveSession`` (frames at 25 fps from ``pipeline.stream``) and the FastAPI app."""
