"""Bases for message classes written by hand in kio's conventions.

kio's reader and writer, and this project's bounds walk, codec and clients,
read five class attributes of every schema class: `__type__` (request,
response or nested), `__version__`, `__flexible__`, `__api_key__` and
`__header_schema__`. kio's generated classes spell the five out in each
class. The classes kio lacks (control.py, old_versions/) take them from one
of four bases and the API version named in the class statement:

    STOP_REPLICA_V3 = ApiVersion(STOP_REPLICA, 3, flexible=True)

    @dataclass(frozen=True, slots=True, kw_only=True)
    class StopReplicaRequest(Request, api=STOP_REPLICA_V3):
        controller_id: BrokerId = field(metadata={"kafka_type": "int32"})
        ...

`Request` and `Response` are the top-level entities; `RequestPart` and
`ResponsePart` the structs nested in them (kio's `EntityType.nested`). The
header follows Kafka's rule: a flexible version's request has request header
v2 and its response response header v1; any other version request header v1
and response header v0. (ApiVersions, whose response header is always v0, is
not written here.)

The attributes are plain class attributes, as kio's are, so kio's native
reader and its writer find them on the class. The bases are not dataclasses
and have empty `__slots__`: a subclass's fields and slots are its own.
"""

from typing import ClassVar, NamedTuple

from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.static.constants import EntityType
from kio.static.primitive import i16

Header = RequestHeaderV1 | RequestHeaderV2 | ResponseHeaderV0 | ResponseHeaderV1


class ApiVersion(NamedTuple):
    """One version of one API, as the classes of its messages declare it."""
    api_key: int
    version: int
    flexible: bool


class KioEntity:
    """Sets kio's class attributes from `api=` in the class statement of a subclass."""

    __slots__ = ()
    __type__: ClassVar[EntityType]
    __version__: ClassVar[i16]
    __flexible__: ClassVar[bool]
    __api_key__: ClassVar[i16]
    __header_schema__: ClassVar[type[Header]]
    _headers: ClassVar[tuple[type[Header], type[Header]]]   # (not flexible, flexible)

    def __init_subclass__(cls, /, api: ApiVersion | None = None, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        # None: one of the bases below, or dataclass(slots=True) making the class
        # anew from one that already has the attributes.
        if api is not None:
            cls.__version__ = i16(api.version)
            cls.__flexible__ = api.flexible
            cls.__api_key__ = i16(api.api_key)
            cls.__header_schema__ = cls._headers[api.flexible]


class Request(KioEntity):
    __slots__ = ()
    __type__ = EntityType.request
    _headers = (RequestHeaderV1, RequestHeaderV2)


class RequestPart(KioEntity):
    __slots__ = ()
    __type__ = EntityType.nested
    _headers = (RequestHeaderV1, RequestHeaderV2)


class Response(KioEntity):
    __slots__ = ()
    __type__ = EntityType.response
    _headers = (ResponseHeaderV0, ResponseHeaderV1)


class ResponsePart(KioEntity):
    __slots__ = ()
    __type__ = EntityType.nested
    _headers = (ResponseHeaderV0, ResponseHeaderV1)
