"""How results look: JSON documents, plain-text tables and panels, and Rich for terminals.

Layer 8. ``json`` builds every JSON document a command prints or writes; ``text``/``table``/
``panel`` and the ``*_panel``/``eval_table``/``judge`` modules lay reports out as plain text;
``rich/`` (the only importer of ``rich``) draws them on a terminal. May import: every layer
below; nothing below imports it.
"""
