"""Small VGG-style CNN: 3 x (conv3x3 + ReLU + maxpool2) with 3 -> 32 -> 64 -> 128 channels, then Linear(128*16*16, 512)
+ ReLU + Linear(512, 10), on x (32, 3, 128, 128) fp32 -> (32, 10). FLOPs: convs 0.9 + 4.8 + 4.8 G + FC 1.1 G
= 11.6 GFLOP; moves ~200 MiB (6 in, 64 MiB FC weight, 64 + 32 + 16 MiB of conv activations)."""
import torch
import torch.nn as nn

batch_size = 32
in_channels = 3
image_size = 128
num_classes = 10


class Model(nn.Module):
    def __init__(self, in_channels, image_size, num_classes):
        super().__init__()
        layers, c = [], in_channels
        for width in (32, 64, 128):
            layers += [nn.Conv2d(c, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
            c = width
        self.features = nn.Sequential(*layers)
        side = image_size // 8
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(c * side * side, 512), nn.ReLU(), nn.Linear(512, num_classes),
        )

    def forward(self, x):
        return self.classifier(self.features(x))


def get_inputs():
    return [torch.randn(batch_size, in_channels, image_size, image_size)]


def get_init_inputs():
    return [in_channels, image_size, num_classes]
