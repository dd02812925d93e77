"""A repository on the Hugging Face hub, through huggingface_hub: its files with their sizes and hashes, the
address of each, and every failure of the hub or the network as one HubError line saying what to do.

huggingface_hub reads HF_ENDPOINT and HF_TOKEN when it is imported; the Hub takes them from the environment
when pull runs, and hands them to every call."""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Optional

import httpx2
from huggingface_hub import HfApi, hf_hub_url
from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, OfflineModeIsEnabled, RepositoryNotFoundError
from huggingface_hub.utils import build_hf_headers

from kinetic import __version__
from kinetic.errors import HubError
from kinetic.hub.files import RemoteFile

DEFAULT_ENDPOINT = "https://huggingface.co"
LISTING_TIMEOUT = 30  # seconds; huggingface_hub's own client waits forever


@dataclass(frozen=True)
class Hub:
    endpoint: str
    token: Optional[str]  # None: huggingface_hub's stored login, if any

    @classmethod
    def from_env(cls) -> Hub:
        endpoint = os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT
        return cls(endpoint.rstrip("/"), os.environ.get("HF_TOKEN") or None)

    def files(self, repo: str) -> tuple[str, list[RemoteFile]]:
        """(the commit main points at, the repository's files there)."""
        with self.failures(repo):
            info = HfApi(endpoint=self.endpoint, token=self.token, library_name="kinetic",
                         library_version=__version__).model_info(repo, files_metadata=True, timeout=LISTING_TIMEOUT)
        files = [RemoteFile(sibling.rfilename, sibling.size or 0, sibling.lfs.sha256 if sibling.lfs else None,
                            sibling.blob_id) for sibling in info.siblings or []]
        return info.sha, files

    def url(self, repo: str, commit: str, name: str) -> str:
        return hf_hub_url(repo, name, revision=commit, endpoint=self.endpoint)

    def headers(self) -> dict[str, str]:
        return build_hf_headers(token=self.token, library_name="kinetic", library_version=__version__)

    @contextmanager
    def failures(self, repo: str) -> Iterator[None]:
        """Turns what huggingface_hub and httpx raise into one line ending in what to do."""
        try:
            yield
        except GatedRepoError:
            raise HubError(f"{repo} is gated: accept its terms on {self.endpoint}/{repo} and set HF_TOKEN to a token "
                           f"of that account") from None
        except RepositoryNotFoundError:
            raise HubError(f"{self.endpoint} has no repository {repo} (a private one needs HF_TOKEN); check the "
                           f"name") from None
        except HfHubHTTPError as error:
            status = error.response.status_code if error.response is not None else "an error"
            hint = "set HF_TOKEN to a token with access to it" if status in (401, 403) else "repeat kinetic pull later"
            raise HubError(f"{self.endpoint} answered {status} for {repo}; {hint}") from None
        except OfflineModeIsEnabled:
            raise HubError("HF_HUB_OFFLINE is set; unset it to download") from None
        except httpx2.TransportError as error:
            reason = " ".join(str(error).split())
            raise HubError(f"cannot reach {self.endpoint} ({type(error).__name__}: {reason}); check the connection "
                           f"or HF_ENDPOINT and repeat kinetic pull") from None
        except OSError as error:  # a download cut short, a full disk: what was fetched stays for the next run
            reason = error.strerror or str(error).splitlines()[0]
            where = f" ({error.filename})" if error.filename else ""
            raise HubError(f"{repo}: {reason}{where}; repeat kinetic pull, which resumes the download") from None
