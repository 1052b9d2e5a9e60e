"""A broken plugin for the bad-input table: its attack overrides prepare() without declaring
keeps_state, which the Attack base class refuses when the class is defined."""

from attacks.base import Attack, register


@register
class ForgetsItKeepsState(Attack):
    name, paper = "forgets_it_keeps_state", "test double"

    def prepare(self, updates, knowledge, ctx):
        pass

    def reconstruct(self, update, knowledge, ctx):
        return []
