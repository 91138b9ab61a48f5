"""The verb definitions, one module per family; :mod:`recuerdo.verbs` registers them."""
