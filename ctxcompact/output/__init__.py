"""How results look: JSON documents, plain-text tables and panels, and Rich for terminals.

Layer 8. ``terminal`` is the run's streams (terminal or pipe, colour, width); ``json`` builds
every JSON document a command prints or writes; ``text``/``table``/``panel`` and the
``*_panel``/``eval_table``/``judge`` modules lay reports out as plain text; ``rich/`` (the only
importer of ``rich``) draws them on a terminal. May import: every layer below; nothing below
imports it.
"""
