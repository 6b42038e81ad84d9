"""The store's exceptions, in a leaf module so every store module can raise them."""


class StoreError(Exception):
    """The store cannot do what was asked (the message is fine in principle)."""


class MessageTooLarge(StoreError):
    """Body larger than `max_message_size`."""
