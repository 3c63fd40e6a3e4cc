"""The one exception type users see: a message that says what is wrong and what to do."""


class UserError(Exception):
    """A problem the user can fix. The CLI prints ``fsmeter: error: <message>`` and exits.

    ``exit_code`` 2 means bad input (a parameter, a file); 1 means the run itself
    could not be done (missing tool, no root, device refused).
    """

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message
