# level1/mse_loss: 1.49x eager (framework_ops), sample 6 of rl_contrastive
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return F.mse_loss(predictions, targets, reduction="mean")