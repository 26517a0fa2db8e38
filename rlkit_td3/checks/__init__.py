"""The homes of the checks, one for each kind, each raising an error that names what is wrong.

- `arguments`: a public call's arguments (switches, seeds), the same rule for every call;
- `state`: a component's state, whether it comes from a file or from the caller (numbers and counters in range,
  generator states, memory, the policy's and optimizers' tensors, the classes a file may name);
- `errors`: the errors the checks of a file raise (`ModelFileError`, `UnsupportedModelError`).

A file's bytes are checked by the one reader (`rlkit_td3.fileio.file_reader`), a model file's entries as a whole
by `rlkit_td3.persistence.file_checks`, and the arguments of ``load()`` / ``save()``, which need the model's
classes, by `rlkit_td3.persistence.load_arguments`. This package imports nothing above it.
"""
