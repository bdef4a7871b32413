"""memory/models.py: what the database keeps of a token."""

from memory.models import ApiToken


def test_tokens_are_stored_hashed(master):
    _, key = ApiToken.issue(agent=master)
    assert not ApiToken.objects.filter(key_hash=key).exists()
    assert key not in str(list(ApiToken.objects.values_list("key_hash", flat=True)))
