"""A small single-stage detector: conv backbone, a shared head giving per-anchor box deltas and
class logits, and the post-processing of detection libraries (decode, score threshold, top-k,
class-aware greedy NMS) in a PostProcess module that is scripted with the network."""
from typing import Dict, List, Tuple

import torch
from torch import Tensor, nn


def box_iou(a: Tensor, b: Tensor) -> Tensor:
    """IoU of every box of `a` (N, 4) with every box of `b` (M, 4), boxes as x1, y1, x2, y2."""
    area_a = (a[:, 2] - a[:, 0]).clamp(min=0) * (a[:, 3] - a[:, 1]).clamp(min=0)
    area_b = (b[:, 2] - b[:, 0]).clamp(min=0) * (b[:, 3] - b[:, 1]).clamp(min=0)
    top_left = torch.max(a[:, None, :2], b[None, :, :2])
    bottom_right = torch.min(a[:, None, 2:], b[None, :, 2:])
    wh = (bottom_right - top_left).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    return inter / (area_a[:, None] + area_b[None, :] - inter + 1e-6)


def greedy_nms(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    """Indices of the boxes kept, best score first: take the best box left, drop every box that
    overlaps it by more than `iou_threshold`, repeat."""
    order = torch.argsort(scores, descending=True)
    keep: List[int] = []
    while order.numel() > 0:
        best = int(order[0])
        keep.append(best)
        if order.numel() == 1:
            break
        rest = order[1:]
        overlap = box_iou(boxes[best].unsqueeze(0), boxes[rest]).squeeze(0)
        order = rest[overlap <= iou_threshold]
    return torch.tensor(keep, dtype=torch.long, device=boxes.device)


def batched_nms(boxes: Tensor, scores: Tensor, labels: Tensor, iou_threshold: float) -> Tensor:
    """NMS per class: boxes of different classes are moved apart so that they never overlap."""
    if boxes.numel() == 0:
        return torch.zeros(0, dtype=torch.long, device=boxes.device)
    offsets = labels.to(boxes.dtype) * (boxes.max() + 1)
    return greedy_nms(boxes + offsets[:, None], scores, iou_threshold)


class ConvBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x: Tensor) -> Tensor:
        return torch.relu(self.bn(self.conv(x)))


class Head(nn.Module):
    def __init__(self, channels: int, num_anchors: int, num_classes: int):
        super().__init__()
        self.num_anchors = num_anchors
        self.num_classes = num_classes
        self.tower = ConvBlock(channels, channels, 1)
        self.box = nn.Conv2d(channels, num_anchors * 4, 3, padding=1)
        self.cls = nn.Conv2d(channels, num_anchors * num_classes, 3, padding=1)
        nn.init.zeros_(self.cls.bias)

    def forward(self, features: Tensor) -> Tuple[Tensor, Tensor]:
        x = self.tower(features)
        n = x.shape[0]
        # (N, A*4, H, W) -> (N, H*W*A, 4), anchors ordered by position then anchor
        deltas = self.box(x).permute(0, 2, 3, 1).reshape(n, -1, 4)
        logits = self.cls(x).permute(0, 2, 3, 1).reshape(n, -1, self.num_classes)
        return deltas, logits


class AnchorGenerator(nn.Module):
    def __init__(self, stride: int, sizes: List[float]):
        super().__init__()
        self.stride = stride
        self.register_buffer("sizes", torch.tensor(sizes))

    def forward(self, features: Tensor) -> Tensor:
        h, w = features.shape[-2], features.shape[-1]
        ys = (torch.arange(h, dtype=torch.float32) + 0.5) * self.stride
        xs = (torch.arange(w, dtype=torch.float32) + 0.5) * self.stride
        cy, cx = torch.meshgrid(ys, xs, indexing="ij")
        centers = torch.stack([cx, cy], dim=-1).reshape(-1, 1, 2).expand(-1, self.sizes.numel(), 2)
        sizes = self.sizes.reshape(1, -1, 1).expand(centers.shape[0], -1, 2)
        return torch.cat([centers, sizes], dim=-1).reshape(-1, 4)  # cx, cy, w, h


class PostProcess(nn.Module):
    def __init__(self, num_classes: int, score_thresh: float, nms_thresh: float, topk: int, max_detections: int):
        super().__init__()
        self.num_classes = num_classes
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.topk = topk
        self.max_detections = max_detections
        self.clamp_dwh = 4.0

    def decode(self, deltas: Tensor, anchors: Tensor) -> Tensor:
        cx = anchors[:, 0] + deltas[:, 0] * anchors[:, 2]
        cy = anchors[:, 1] + deltas[:, 1] * anchors[:, 3]
        w = anchors[:, 2] * torch.exp(deltas[:, 2].clamp(max=self.clamp_dwh))
        h = anchors[:, 3] * torch.exp(deltas[:, 3].clamp(max=self.clamp_dwh))
        return torch.stack([cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h], dim=1)

    def forward(self, deltas: Tensor, logits: Tensor, anchors: Tensor,
                image_size: List[int]) -> List[Dict[str, Tensor]]:
        results: List[Dict[str, Tensor]] = []
        for i in range(deltas.shape[0]):
            scores = torch.sigmoid(logits[i]).flatten()
            candidates = torch.nonzero(scores > self.score_thresh).squeeze(1)
            scores = scores[candidates]
            k = min(self.topk, candidates.numel())
            scores, order = scores.topk(k)
            candidates = candidates[order]
            anchor_idx = torch.div(candidates, self.num_classes, rounding_mode="floor")
            labels = candidates % self.num_classes
            boxes = self.decode(deltas[i][anchor_idx], anchors[anchor_idx])
            boxes[:, 0::2] = boxes[:, 0::2].clamp(min=0, max=image_size[1])
            boxes[:, 1::2] = boxes[:, 1::2].clamp(min=0, max=image_size[0])
            keep = batched_nms(boxes, scores, labels, self.nms_thresh)
            keep = keep[: self.max_detections]
            results.append({"boxes": boxes[keep], "scores": scores[keep], "labels": labels[keep]})
        return results


class Detector(nn.Module):
    def __init__(self, num_classes: int = 3, width: int = 16, score_thresh: float = 0.5,
                 nms_thresh: float = 0.4, topk: int = 60, max_detections: int = 100):
        super().__init__()
        sizes = [12.0, 24.0]
        self.backbone = nn.Sequential(ConvBlock(3, width, 2), ConvBlock(width, width, 2), ConvBlock(width, width, 1))
        self.head = Head(width, len(sizes), num_classes)
        self.anchors = AnchorGenerator(4, sizes)
        self.postprocess = PostProcess(num_classes, score_thresh, nms_thresh, topk, max_detections)

    def forward(self, images: Tensor) -> List[Dict[str, Tensor]]:
        features = self.backbone(images)
        deltas, logits = self.head(features)
        anchors = self.anchors(features)
        return self.postprocess(deltas, logits, anchors, [images.shape[-2], images.shape[-1]])
