"""The authorization center: members, grants, tokens, audit."""
