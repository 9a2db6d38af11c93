#!/usr/bin/env python3
"""Translates a SAM template with aws-sam-translator, as CloudFormation's
AWS::Serverless transform would after `sam package`, and prints the result
(JSON) or the translator's errors (exit status 1).

`sam package` replaces each local CodeUri with the S3 URI it uploaded; this
script puts a placeholder URI in its place, so the check needs neither Docker
nor AWS credentials nor a network. Usage: sam_translate.py template.yaml
"""
import json
import os
import sys

os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

try:
    from samtranslator.public.exceptions import InvalidDocumentException
    from samtranslator.translator.transform import transform
    from samtranslator.yaml_helper import yaml_parse
except ImportError:
    sys.exit("sam_translate: aws-sam-translator is missing: pip install aws-sam-translator")

PLACEHOLDER = "s3://sam-package-placeholder/code.zip"


class NoManagedPolicies:
    """The translator looks AWS managed policies up by name through IAM; this
    template names none, so no lookup (and no credentials) are needed."""

    def load(self):
        return {}


def packaged(template):
    globals_fn = template.get("Globals", {}).get("Function", {})
    if isinstance(globals_fn.get("CodeUri"), str):
        globals_fn["CodeUri"] = PLACEHOLDER
    for resource in template.get("Resources", {}).values():
        if resource.get("Type") == "AWS::Serverless::Function":
            props = resource.setdefault("Properties", {})
            if isinstance(props.get("CodeUri", ""), str) and "InlineCode" not in props:
                props["CodeUri"] = PLACEHOLDER
    return template


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        template = packaged(yaml_parse(f.read()))
    try:
        out = transform(template, {}, NoManagedPolicies())
    except InvalidDocumentException as e:
        for cause in e.causes:
            print(f"sam_translate: {cause.message}", file=sys.stderr)
        sys.exit(1)
    json.dump(out, sys.stdout, indent=1, sort_keys=True, default=str)
    print()


if __name__ == "__main__":
    main()
