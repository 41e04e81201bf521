"""Verifies an agent card signed by the Rust SDK with the Python SDK's own
verifier (a2a.utils.signing), against the keys of a JWKS file.

Usage: python_verify_card.py CARD.json JWKS.json
Prints {"verified": true} or {"verified": false, "error": "..."}.
"""
import json
import sys

from google.protobuf.json_format import ParseDict
from jwt import PyJWK

from a2a.types import AgentCard
from a2a.utils.signing import create_signature_verifier


def main():
    card_path, jwks_path = sys.argv[1], sys.argv[2]
    with open(card_path, encoding="utf-8") as f:
        card = ParseDict(json.load(f), AgentCard(), ignore_unknown_fields=True)
    with open(jwks_path, encoding="utf-8") as f:
        keys = {k["kid"]: PyJWK.from_dict(k).key for k in json.load(f)["keys"]}

    def key_provider(kid, jku):
        return keys[kid]

    verify = create_signature_verifier(key_provider, ["ES256", "EdDSA", "RS256"])
    try:
        verify(card)
        print(json.dumps({"verified": True}))
    except Exception as err:  # the test reads the reason
        print(json.dumps({"verified": False, "error": f"{type(err).__name__}: {err}"}))


if __name__ == "__main__":
    main()
