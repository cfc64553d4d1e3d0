"""The expression language shared by QRE queries and user-declared aggregates (UDAFs).

``lexer`` splits text into tokens, ``parser`` reads an expression into a tree of plain tuples
(the extension point is the table of functions a language admits), ``functions`` holds the math
functions each language admits. Evaluation is the language's own: ``engine.qre.expr`` runs trees
with Python semantics, ``engine.windows.udaf`` over numpy arrays.
"""
