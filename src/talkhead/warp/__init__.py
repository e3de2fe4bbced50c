"""The warp renderer: a photo moved by the template's points, and its drawn mouth."""
