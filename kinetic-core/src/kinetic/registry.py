"""Typed registries filled through the hooks; a second registration of a key is refused."""

from __future__ import annotations

from typing import Callable, Generic, Iterable, Iterator, TypeVar

from kinetic.errors import PluginError

T = TypeVar("T")


class Registry(Generic[T]):
    """Items of one kind, found by any of their keys, remembering which plugin registered each."""

    def __init__(self, kind: str, keys: Callable[[T], Iterable[object]]):
        self.kind = kind
        self._keys = keys
        self._by_key: dict[object, T] = {}
        self._owners: dict[int, str] = {}
        self._items: list[T] = []

    def add(self, item: T, plugin: str) -> None:
        keys = list(self._keys(item))
        for key in keys:
            if key in self._by_key:
                owner = self._owners[id(self._by_key[key])]
                raise PluginError(f"{self.kind} {key!r} from plugin {plugin!r} is already registered by plugin {owner!r}")
        for key in keys:
            self._by_key[key] = item
        self._owners[id(item)] = plugin
        self._items.append(item)

    def get(self, key: object) -> T | None:
        return self._by_key.get(key)

    def owner(self, item: T) -> str:
        return self._owners[id(item)]

    def __getitem__(self, key: object) -> T:
        return self._by_key[key]

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    def __iter__(self) -> Iterator[T]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)
