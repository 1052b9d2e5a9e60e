"""A graph classifier as PyG's GIN example (``examples/gin.py`` of PyTorch Geometric) writes it,
unchanged: GIN layers (Xu et al., "How Powerful are Graph Neural Networks?", ICLR 2019) over
PyG's ``MLP`` (batch norm inside, its default), ReLU after every layer, sum pooling and an MLP head
with dropout. Nothing in it knows about fedgraph_sim; ``gin.yaml`` beside it federates and audits it.
"""

import torch
from torch_geometric.nn import MLP, GINConv, global_add_pool


class Net(torch.nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels, num_layers):
        super().__init__()

        self.convs = torch.nn.ModuleList()
        for _ in range(num_layers):
            mlp = MLP([in_channels, hidden_channels, hidden_channels])
            self.convs.append(GINConv(nn=mlp, train_eps=False))
            in_channels = hidden_channels

        self.mlp = MLP([hidden_channels, hidden_channels, out_channels],
                       norm=None, dropout=0.5)

    def forward(self, x, edge_index, batch):
        for conv in self.convs:
            x = conv(x, edge_index).relu()
        x = global_add_pool(x, batch)
        return self.mlp(x)
