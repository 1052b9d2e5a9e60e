"""Users' models for the tests: written as PyG users write them, knowing nothing of fedgraph_sim."""

import torch
from torch_geometric.nn import MLP, GCNConv, GINConv, SAGEConv, global_add_pool, global_mean_pool


class PlainGIN(torch.nn.Module):
    """PyG's GIN example without batch norm and dropout."""

    def __init__(self, in_channels, hidden_channels, out_channels, num_layers):
        super().__init__()
        self.convs = torch.nn.ModuleList()
        for _ in range(num_layers):
            self.convs.append(GINConv(nn=MLP([in_channels, hidden_channels, hidden_channels], norm=None)))
            in_channels = hidden_channels
        self.mlp = MLP([hidden_channels, hidden_channels, out_channels], norm=None)

    def forward(self, x, edge_index, batch):
        for conv in self.convs:
            x = conv(x, edge_index).relu()
        return self.mlp(global_add_pool(x, batch))


class DropoutGIN(PlainGIN):
    def __init__(self, in_channels, out_channels):
        super().__init__(in_channels, 16, out_channels, 2)
        self.mlp = MLP([16, 16, out_channels], norm=None, dropout=0.5)


class MeanGCN(torch.nn.Module):
    def __init__(self, in_channels, out_channels, hidden=16):
        super().__init__()
        self.conv1, self.conv2 = GCNConv(in_channels, hidden), GCNConv(hidden, hidden)
        self.lin = torch.nn.Linear(hidden, out_channels)

    def forward(self, x, edge_index, batch):
        x = self.conv2(self.conv1(x, edge_index).relu(), edge_index).relu()
        return self.lin(global_mean_pool(x, batch))


class Mixed(MeanGCN):
    def __init__(self, in_channels, out_channels):
        super().__init__(in_channels, out_channels)
        self.conv2 = SAGEConv(16, 16)


class NodeLogits(torch.nn.Module):
    """Forgets to pool: one row per node."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = GCNConv(in_channels, out_channels)

    def forward(self, x, edge_index, batch):
        return self.conv(x, edge_index)


class NeedsData(torch.nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin = torch.nn.Linear(in_channels, out_channels)

    def forward(self, data):
        return self.lin(data.x)


class NoChannels(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.lin = torch.nn.Linear(width, 2)
