"""The training tests' model and data (accumulation_training.py, fsdp_training.py): a
1.3 M-parameter transformer block (embedding, one encoder layer with LayerNorm, a head over the
vocabulary) and its seeded micro-batches of token sequences, the same on every rank and in every
process, so that runs split differently see the same global batch."""

import torch

SEQUENCES = 2   # per micro-batch
LENGTH = 8      # tokens per sequence
VOCAB = 1024
WIDTH = 256


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, WIDTH)
        self.position = torch.nn.Parameter(torch.zeros(LENGTH, WIDTH))
        self.layer = torch.nn.TransformerEncoderLayer(WIDTH, 4, dim_feedforward=4 * WIDTH,
                                                      dropout=0.0, batch_first=True)
        self.norm = torch.nn.LayerNorm(WIDTH)
        self.head = torch.nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens):
        return self.head(self.norm(self.layer(self.embed(tokens) + self.position)))


def make_model():
    torch.manual_seed(1234)
    return Block()


def micro_batch(step, index):
    generator = torch.Generator().manual_seed(1000 * step + index)
    tokens = torch.randint(0, VOCAB, (SEQUENCES, LENGTH + 1), generator=generator)
    return tokens[:, :-1], tokens[:, 1:]


def loss_of(model, step, index, device="cpu"):
    """Micro-batch `index` of `step`'s cross-entropy under `model`."""
    x, y = (t.to(device) for t in micro_batch(step, index))
    return torch.nn.functional.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
