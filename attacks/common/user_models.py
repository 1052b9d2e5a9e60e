"""A user's model (``model.module``) as the bench's classifier, for attacks that replay a model
layer by layer: the update and the attacker's knowledge under the classifier's names
(:mod:`fedgraph_sim.models.reading`). Only names change: the arrays are the ones the server
received."""

from __future__ import annotations

import dataclasses

from fedgraph_sim.models.reading import ClassifierReading, read_as_classifier
from fedgraph_sim.threat import AttackerKnowledge, ObservedUpdate


def reading_of(knowledge: AttackerKnowledge) -> ClassifierReading | str:
    """The reading of the user's model in ``knowledge``, or why there is none."""
    return read_as_classifier(knowledge.build_model(), knowledge.num_features, knowledge.num_classes)


def as_classifier(update: ObservedUpdate, knowledge: AttackerKnowledge,
                  reading: ClassifierReading) -> tuple[ObservedUpdate, AttackerKnowledge]:
    """``update`` and ``knowledge`` with the user's model replaced by its reading."""
    return (dataclasses.replace(update, global_weights=reading.arrays(update.global_weights),
                                returned=reading.arrays(update.returned)),
            dataclasses.replace(knowledge, model=reading.spec))
