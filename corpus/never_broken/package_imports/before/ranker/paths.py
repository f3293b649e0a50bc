import os


def artifact_path(root: str, cfg: dict) -> str:
    return os.path.join(root, "artifacts", f"{cfg['name']}-v{cfg['version']}.pt")
