"""Which worker runs which call: how many workers, pinned stateful groups, calls sharing a fit."""

from attacks.base import Attack
from server.attack_calls import Call
from server.attack_scheduling import CallQueue, slots, stateful_groups


class Stands(Attack):
    name, paper = "stands", "test double"

    def reconstruct(self, update, knowledge, ctx):
        return []


class Keeps(Stands):
    name, keeps_state = "keeps", True


def test_stateful_groups_are_the_attacks_that_keep_state_their_variants_together():
    attacks = {"keeps": Keeps(), "stands": Stands(), "keeps@refine": Keeps(), "other": Keeps()}
    assert stateful_groups(attacks) == ["keeps", "other"]


def test_slots_are_the_workers_asked_but_no_more_than_the_stateful_groups_when_every_attack_keeps_state():
    assert slots({"keeps": Keeps(), "keeps@refine": Keeps()}, 4) == 1
    assert slots({"keeps": Keeps(), "stands": Stands()}, 4) == 4
    assert slots({"stands": Stands()}, 0) == 1


def reconstruct(index, name, seed=1, fit_group=""):
    return Call(index, "reconstruct", name, None, None, seed, 1.0, fit_group)


def test_a_pinned_group_goes_to_its_worker_one_call_at_a_time_and_the_rest_with_those_sharing_its_fit():
    one, two = object(), object()
    queue = CallQueue({"keeps": one})
    queue.pending = [reconstruct(0, "keeps"), reconstruct(1, "keeps@refine"), reconstruct(2, "stands"),
                     reconstruct(3, "stands@bp", fit_group="stands"), reconstruct(4, "stands@bp", 2, "stands")]
    assert [c.index for c in queue.take(two)] == [2, 3]  # same seed and fit group: one worker, in order
    assert [c.index for c in queue.take(one)] == [0]
    assert [c.index for c in queue.take(two)] == [4]
    assert queue.take(two) == []  # the pinned group's call waits for its worker
    assert [c.index for c in queue.take(one)] == [1]
