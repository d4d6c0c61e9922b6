"""Files <-> models and experiments: native JSON, PMEvo artifact files, OSACA machine files.

Everything that reads or writes a model or an experiment file lives here, with errors that
name the file, line and column (pmpredict.errors.InputError).
"""
