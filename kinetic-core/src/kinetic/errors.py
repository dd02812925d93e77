"""The errors Kinetic reports to users: one clear line each, never a traceback."""


class KineticError(Exception):
    """A failure the user can act on; str(error) is the one line shown."""


class ModelFileError(KineticError):
    """A model file that is missing, truncated, corrupt or of an unsupported kind."""


class PluginError(KineticError):
    """A plugin that failed to import or registered something twice."""


class ChatTemplateError(KineticError):
    """A chat template that cannot be read, does not compile, fails or runs away while rendering."""


def file_error(path, error: OSError) -> ModelFileError:
    """The one line for a model file that cannot be opened at all."""
    if isinstance(error, FileNotFoundError):
        return ModelFileError(f"{path}: no such file; check the path")
    if isinstance(error, IsADirectoryError):
        return ModelFileError(f"{path}: is a folder, not a model file")
    if isinstance(error, PermissionError):
        return ModelFileError(f"{path}: permission denied; check the file's permissions")
    return ModelFileError(f"{path}: cannot read it: {error.strerror or error}")
