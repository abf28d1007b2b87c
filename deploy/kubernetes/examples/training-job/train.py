"""A small PyTorch training loop over a data set mounted by the granary
sidecar (DATA_DIR), with checkpoints written to Granary over S3.

Every file under DATA_DIR is one sample: its first 4 KiB as a vector of
bytes, its label the name of the directory it is in. The point is the
I/O: a DataLoader with workers reading files through the mount, and
torch.save to a write-back bucket (CHECKPOINT_BUCKET) through boto3; a
restarted Job resumes from the newest checkpoint there.
"""
import io
import os

import boto3
import torch
from torch.utils.data import DataLoader, Dataset

SAMPLE = 4096


class Files(Dataset):
    def __init__(self, root):
        self.paths = sorted(
            os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)
        if not self.paths:
            raise SystemExit(f"no files under {root}: is the mount there?")
        names = sorted({os.path.basename(os.path.dirname(p)) for p in self.paths})
        self.label = {n: i for i, n in enumerate(names)}

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        path = self.paths[i]
        with open(path, "rb") as f:
            raw = f.read(SAMPLE).ljust(SAMPLE, b"\0")
        x = torch.frombuffer(bytearray(raw), dtype=torch.uint8).float() / 255
        return x, self.label[os.path.basename(os.path.dirname(path))]


def latest(s3, bucket, prefix):
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    keys = [o["Key"] for p in pages for o in p.get("Contents", [])]
    return max(keys) if keys else None


def main():
    data = Files(os.environ.get("DATA_DIR", "/mnt/data"))
    bucket = os.environ["CHECKPOINT_BUCKET"]
    prefix = os.environ.get("CHECKPOINT_PREFIX", "")
    epochs = int(os.environ.get("EPOCHS", "3"))
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = torch.nn.Sequential(
        torch.nn.Linear(SAMPLE, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, len(data.label))).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    s3 = boto3.client("s3")  # AWS_ENDPOINT_URL and the keys from the environment
    start = 0
    key = latest(s3, bucket, prefix)
    if key:
        state = torch.load(io.BytesIO(s3.get_object(Bucket=bucket, Key=key)["Body"].read()))
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["epoch"] + 1
        print(f"resumed from s3://{bucket}/{key}", flush=True)
    loader = DataLoader(data, batch_size=64, shuffle=True, num_workers=8)
    for epoch in range(start, epochs):
        for x, y in loader:
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device))
            loss.backward()
            opt.step()
        buf = io.BytesIO()
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "epoch": epoch}, buf)
        buf.seek(0)
        key = f"{prefix}epoch-{epoch:04d}.pt"
        s3.upload_fileobj(buf, bucket, key)
        print(f"epoch {epoch}: loss {loss.item():.4f}, checkpoint s3://{bucket}/{key}", flush=True)


if __name__ == "__main__":
    main()
