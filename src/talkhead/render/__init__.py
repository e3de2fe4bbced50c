"""Renderers: photo + motion [T, 58] -> frames uint8 [T, H, W, 3].

``WarpRenderer`` (training-free, the default) lives in ``render.warp``; face
registration in ``render.face``, the 3D landmark rig in ``render.template``.
Import from the submodules; this package stays light so that importing it
does not pull in dlib.
"""
