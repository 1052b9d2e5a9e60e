"""GraphDLG (Wei et al., arXiv 2601.19745, 2026): embedding recovery, structure decoder, GNFR."""

from attacks.graphdlg.attack import GraphDLG
from attacks.graphdlg.decoder import StructureDecoder, train_decoder
from attacks.graphdlg.embedding import recover_embedding
from attacks.graphdlg.gnfr import gnfr, kron_solve, solve_layer

__all__ = ["GraphDLG", "StructureDecoder", "gnfr", "kron_solve", "recover_embedding",
           "solve_layer", "train_decoder"]
