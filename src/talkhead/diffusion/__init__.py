"""The diffusion core: schedule, samplers, the parameterisation wrapper, losses, stored teacher samples.

Nothing here knows what is being generated: the motion model (``talkhead.motion``) and any other
model build on it with their own network and conditioning.
"""
