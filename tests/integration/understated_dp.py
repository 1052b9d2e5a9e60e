"""A test double (a plugin): DP-SGD whose accountant claims a tenth of the epsilon it spends, which
the DP audit must catch."""

from clients.defenses.dp_sgd import DPSGD
from fedgraph_sim import registry


@registry.defenses.register
class UnderstatedDPSGD(DPSGD):
    name = "dp_sgd_understated"

    def plan(self, turn):  # the noise for ten times the target: what the report then claims
        if self.target_epsilon is None:
            return super().plan(turn)
        self.target_epsilon *= 10
        try:
            return super().plan(turn)
        finally:
            self.target_epsilon /= 10

    def report(self) -> dict[str, float]:
        return {**super().report(), "epsilon": super().epsilon() / 10}
