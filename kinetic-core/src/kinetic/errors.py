"""The errors Kinetic reports to users: one clear line each, never a traceback."""


class KineticError(Exception):
    """A failure the user can act on; str(error) is the one line shown."""


class ModelFileError(KineticError):
    """A model file that is missing, truncated, corrupt or of an unsupported kind."""


class PluginError(KineticError):
    """A plugin that failed to import or registered something twice."""


class PromptError(KineticError):
    """A prompt the engine refuses before any work starts (engine.generate.check_prompt); str(error) is the
    command line's line, and the server words it for its clients."""


class PromptTooLong(PromptError):
    """A prompt that does not fit the context; each front end says how to make room in its own words."""

    def __init__(self, length: int, context_length: int):
        self.length = length
        self.context_length = context_length
        super().__init__(f"{self.facts}; use a larger -c or a shorter prompt")

    @property
    def facts(self) -> str:
        return f"the prompt is {self.length} tokens, more than the context of {self.context_length}"


class ChatTemplateError(KineticError):
    """A chat template that cannot be read, does not compile, fails or runs away while rendering."""


class HubError(KineticError):
    """A download from Hugging Face (kinetic pull) that cannot go on: a repository, file or quantization not
    there, no access, no connection, too little disk, a file whose hash does not match."""


class ModelNameError(KineticError):
    """A model given by a name (kinetic.stores) that names no model found on this computer, or several."""


def file_error(path, error: OSError) -> ModelFileError:
    """The one line for a model file that cannot be opened at all."""
    if isinstance(error, FileNotFoundError):
        return ModelFileError(f"{path}: no such file; check the path")
    if isinstance(error, IsADirectoryError):
        return ModelFileError(f"{path}: is a folder, not a model file")
    if isinstance(error, PermissionError):
        return ModelFileError(f"{path}: permission denied; check the file's permissions")
    return ModelFileError(f"{path}: cannot read it: {error.strerror or error}")
