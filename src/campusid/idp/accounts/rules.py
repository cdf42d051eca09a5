"""The rules an account's values follow, one of each, whoever makes or changes the account: the
CLI (`campusid users add`), the demo's users, the account page's password change, and the local
copies of directory people (idp/directory.py). They read no database, so a command checks them
before it opens one, and `add_user` checks them again for every other caller."""

from __future__ import annotations

from campusid.idp.accounts.errors import InvalidAccount

ROLES = ("student", "developer", "admin")

# What the users table holds at most (store/schema.py). Checked here because the databases
# disagree past them: PostgreSQL refuses a longer value, SQLite keeps it whole.
MAX_USERNAME = 64
MAX_NAME = 200
MAX_GIVEN_NAME = 100
MAX_FAMILY_NAME = 100
MAX_EMAIL = 254  # RFC 5321 4.5.3.1.3: the longest path, less its angle brackets
MAX_STUDENT_NUMBER = 32

# The password policy is a length and nothing else: NIST SP 800-63B 5.1.1.2 asks for at least 8
# characters and advises against composition rules. The minimum is 10, the stricter of the two
# the CLI (8) and the account page (10) asked for before there was one policy: argon2id makes each
# guess costly, a longer minimum makes the guesses many. It applies to a password being set; one
# set under an older minimum still signs in (the login page checks no minimum).
MIN_PASSWORD = 10
# The most characters a password may have, to set or to sign in with: the login form refuses a
# longer one before hashing it (web/pages.py), which bounds what an anonymous request hands to
# argon2id. NIST asks to allow at least 64; passphrases fit.
MAX_PASSWORD = 1024
PASSWORD_RULE = f"the password must be {MIN_PASSWORD} to {MAX_PASSWORD} characters"
USERNAME_RULE = f"the username must be 1-{MAX_USERNAME} printable characters without spaces"


def _fits(value: str, limit: int) -> bool:
    """1..limit characters, none that str.isprintable refuses: controls, format characters (a bidi
    override among them), separators but the space, surrogates, private-use and unassigned code
    points. What is stored is then what a page or a terminal shows."""
    return 0 < len(value) <= limit and value.isprintable()


def password_fits(password: str) -> bool:
    """A new password: MIN_PASSWORD to MAX_PASSWORD characters (code points, as NIST counts them)."""
    return MIN_PASSWORD <= len(password) <= MAX_PASSWORD


def check_password(password: str) -> None:
    if not password_fits(password):
        raise InvalidAccount(PASSWORD_RULE)


def check_username(username: str) -> None:
    """A local account's username: 1-64 printable characters without spaces. The login page trims
    the spaces around what is typed, so a name with spaces could never be typed back."""
    if not _fits(username, MAX_USERNAME) or " " in username:
        raise InvalidAccount(USERNAME_RULE)


def directory_username_fits(username: str) -> bool:
    """A directory account's username, kept exactly as the directory has it (never trimmed; a
    space inside is the directory's to allow): 1-64 printable characters, as the table holds."""
    return _fits(username, MAX_USERNAME)


def check_role(role: str) -> None:
    if role not in ROLES:
        raise InvalidAccount(f"the role must be one of {', '.join(ROLES)}")


def _check_text(what: str, value: str | None, limit: int, *, required: bool = False, spaces: bool = True) -> None:
    """A name, stored as given (never split or trimmed): present (if required), 1..limit
    printable characters, not only spaces, and without any when `spaces` is False."""
    if value is None and not required:
        return
    if value is None or not _fits(value, limit) or value.isspace() or (not spaces and " " in value):
        without = "" if spaces else " without spaces"
        raise InvalidAccount(f"the {what} must be 1-{limit} printable characters{without}")


def check_profile(
    *,
    name: str,
    given_name: str | None = None,
    family_name: str | None = None,
    email: str | None = None,
    student_number: str | None = None,
) -> None:
    """The claims an account shows to apps (OIDC Core 5.1): the display name is required; the
    others are absent (None, and then left out of tokens) or hold a value."""
    _check_text("name", name, MAX_NAME, required=True)
    _check_text("given name", given_name, MAX_GIVEN_NAME)
    _check_text("family name", family_name, MAX_FAMILY_NAME)
    _check_text("email address", email, MAX_EMAIL, spaces=False)
    if email is not None and not (0 < email.find("@") < len(email) - 1):
        raise InvalidAccount(f"the email address {email!r} has no @ between a local part and a domain")
    _check_text("student number", student_number, MAX_STUDENT_NUMBER, spaces=False)


def check_new_user(
    *,
    username: str,
    password: str,
    role: str,
    name: str,
    given_name: str | None = None,
    family_name: str | None = None,
    email: str | None = None,
    student_number: str | None = None,
) -> None:
    """Every rule a new local account follows, the first broken one raised as InvalidAccount."""
    check_password(password)
    check_username(username)
    check_role(role)
    check_profile(name=name, given_name=given_name, family_name=family_name, email=email, student_number=student_number)
