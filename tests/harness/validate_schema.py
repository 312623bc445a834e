#!/usr/bin/python3
"""Validates JSON documents against a JSON Schema: validate_schema.py SCHEMA DOC.json...

Exit 0 when every document is valid, 1 when one is not (each error printed as
"<doc>: <json path>: <message>"), 77 when the jsonschema module is absent (Debian python3-jsonschema).
"""
import json
import sys

try:
    import jsonschema
except ImportError:
    print("python3-jsonschema is not installed", file=sys.stderr)
    sys.exit(77)


def main(argv):
    with open(argv[1]) as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema)
    bad = 0
    for path in argv[2:]:
        with open(path) as f:
            doc = json.load(f)
        for err in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
            bad += 1
            where = "/".join(str(p) for p in err.absolute_path) or "(root)"
            print(f"{path}: {where}: {err.message}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
