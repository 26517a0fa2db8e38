"""Reading and writing bytes safely: the bottom wing of the house.

`file_reader` is the one reader of every byte that comes from a file (sizes, ratios, depth, dtypes, the pickle
policy), `plain_pickle` its plain-data unpickler, `serialization` the model zip and atomic writes, and
`model_files` the registries of file formats and algorithm classes. Nothing here imports a component.
"""
