"""Face geometry: detection, the 3-D template and its fit, framing, affine maps, capture, occlusion."""
