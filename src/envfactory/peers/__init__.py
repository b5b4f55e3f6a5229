"""Worlds other projects built, imported into envfactory and run by its engine."""
