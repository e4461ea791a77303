"""`topogen init`: scaffold topogen.yaml (and its JSON schema) in a GitOps repository."""
