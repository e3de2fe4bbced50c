"""Motion models' training: configs, the teacher and its students' objectives, the lip net."""
