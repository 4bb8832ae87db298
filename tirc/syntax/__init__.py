"""The language's text: the lexer, the parsers (hand-written and Lark's LALR) and the parse tree."""
