"""Chat templates: a model's own Jinja template, rendered as Hugging Face renders it, in a bounded sandbox."""

from kinetic.chat.template import ChatTemplate, load_chat_template

__all__ = ["ChatTemplate", "load_chat_template"]
