"""Operations on the whole index that the CLI and the server run: status, forget, junk journals."""
