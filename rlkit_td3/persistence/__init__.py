"""What a model file holds and how a run resumes.

`checkpoint` (this library's model file: it walks the components' ``state_dict()``), `training_state` and
`env_state` (the loop's and the envs' part of a run), `parameters` (SB3's ``get_parameters`` /
``set_parameters``), `file_checks` (a model file's entries, checked as a whole), `load_arguments` (the
arguments of ``load()`` / ``save()``), and `sb3_zip` / `sb3_import` (reading a Stable-Baselines3 file).
"""
