"""The patches localdynamo.py installs into moto, one module per concern."""
