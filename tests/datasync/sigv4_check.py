#!/usr/bin/python3
"""Checks captured S3 requests against botocore's SigV4 signer (an independent implementation).

Usage: /usr/bin/python3 sigv4_check.py CASE.json
CASE.json: {"access_key": ..., "secret_key": ..., "token": ... (optional), "region": ...,
            "requests": [{"method": ..., "target": "/path?query", "headers": [[name, value], ...],
                          "body_hex": ...}, ...]}
Each request is rebuilt from its method, target, body and the headers its Authorization names in
SignedHeaders, at its own X-Amz-Date, and signed by botocore.auth.S3SigV4Auth; the signature must
equal the one sent. Also checked: the credential scope, x-amz-content-sha256 against the body,
and that the query string is already canonical (sorted, every value SigV4-encoded).
Exit 0 and "ok N requests" when all pass; 1 with one line per failure; 3 when botocore is missing.
"""
import hashlib
import json
import sys
from urllib.parse import quote, unquote

try:
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
except ImportError as e:  # pragma: no cover
    print("botocore missing: %s" % e)
    sys.exit(3)

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def parse_authorization(value):
    algo, _, rest = value.partition(" ")
    fields = {}
    for part in rest.split(","):
        k, _, v = part.strip().partition("=")
        fields[k] = v
    return algo, fields


def check_query(query):
    problems = []
    if not query:
        return problems
    pairs = [p.partition("=") for p in query.split("&")]
    names = [k for k, _, _ in pairs]
    if names != sorted(names):
        problems.append("query parameters not sorted: %s" % names)
    for k, _, v in pairs:
        for part in (k, v):
            if quote(unquote(part), safe="-_.~") != part:
                problems.append("not SigV4-encoded: %r" % part)
    return problems


def check(case, req):
    problems = []
    headers = {}
    for name, value in req["headers"]:
        headers.setdefault(name.lower(), value)
    for required in ("host", "x-amz-date", "x-amz-content-sha256", "authorization"):
        if required not in headers:
            problems.append("missing header %s" % required)
    if problems:
        return problems
    algo, fields = parse_authorization(headers["authorization"])
    if algo != "AWS4-HMAC-SHA256":
        problems.append("algorithm %s" % algo)
    amz_date = headers["x-amz-date"]
    scope = "%s/%s/%s/s3/aws4_request" % (case["access_key"], amz_date[:8], case["region"])
    if fields.get("Credential") != scope:
        problems.append("credential scope %s, expected %s" % (fields.get("Credential"), scope))
    signed = fields.get("SignedHeaders", "").split(";")
    for must in ("host", "x-amz-content-sha256", "x-amz-date"):
        if must not in signed:
            problems.append("%s not signed" % must)
    if case.get("token"):
        if headers.get("x-amz-security-token") != case["token"]:
            problems.append("x-amz-security-token missing or wrong")
        if "x-amz-security-token" not in signed:
            problems.append("x-amz-security-token not signed")
    body = bytes.fromhex(req["body_hex"])
    content_sha = headers["x-amz-content-sha256"]
    if content_sha != "UNSIGNED-PAYLOAD" and content_sha != hashlib.sha256(body).hexdigest():
        problems.append("x-amz-content-sha256 does not match the body")
    path, _, query = req["target"].partition("?")
    problems += check_query(query)

    missing = [h for h in signed if h not in headers]
    if missing:
        problems.append("signed headers not sent: %s" % missing)
        return problems
    aws_req = AWSRequest(method=req["method"], url="http://" + headers["host"] + req["target"],
                         data=body, headers={h: headers[h] for h in signed})
    aws_req.context["timestamp"] = amz_date
    creds = Credentials(case["access_key"], case["secret_key"], case.get("token") or None)
    signer = S3SigV4Auth(creds, "s3", case["region"])
    canonical = signer.canonical_request(aws_req)
    string_to_sign = signer.string_to_sign(aws_req, canonical)
    expected = signer.signature(string_to_sign, aws_req)
    if fields.get("Signature") != expected:
        problems.append("signature %s, botocore computes %s; canonical request:\n%s" %
                        (fields.get("Signature"), expected, canonical))
    return problems


def main():
    with open(sys.argv[1]) as f:
        case = json.load(f)
    failures = 0
    for i, req in enumerate(case["requests"]):
        for p in check(case, req):
            failures += 1
            print("request %d (%s %s): %s" % (i, req["method"], req["target"], p))
    if failures:
        sys.exit(1)
    print("ok %d requests" % len(case["requests"]))


if __name__ == "__main__":
    main()
