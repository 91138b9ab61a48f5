"""The verbs of :class:`recuerdo.Memory`, one mixin per family (the logic lives in the family
modules; these methods pick the tenant and writer, open the transaction and commit)."""
