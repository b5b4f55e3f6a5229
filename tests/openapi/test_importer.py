"""The importer on hand-made documents: every construct it claims to read, and the REST
semantics of the tools it compiles, exercised through live episodes."""

from __future__ import annotations

import pytest
from openapi_worlds import SPECS, Client, domain, world

from envfactory.openapi.document import SpecError, load_document, parse_text, read_document
from envfactory.openapi.model import NoWorld
from envfactory.openapi.names import identifier, singular, words, world_id
from envfactory.openapi.resources import build_graph


def test_resources_from_paths_nesting_and_refs() -> None:
    doc = load_document(read_document(SPECS / "clinic-oas3.yaml"), "clinic")
    graph = build_graph(doc)
    pet = graph.resources["pet"]
    assert set(graph.resources) == {"owner", "pet", "vet"}
    assert pet.parent == "owner"  # from /owners/{ownerId}/pets
    assert set(pet.endpoints) == {"list", "get", "create", "update", "delete"}
    assert pet.endpoints["get"].id_param == "petId"
    assert graph.skipped["custom action or singleton"] == 1  # POST .../vaccinate
    props = {p.name: p for p in pet.props}
    assert props["species"].enum == ("dog", "cat", "rabbit", "parrot")  # enum
    assert props["status"].enum == ("available", "adopted", "in_treatment")  # $ref'd enum
    assert props["name"].required  # allOf merges required
    assert {"chipNumber", "tattoo"} <= set(props)  # oneOf variants, flattened


def test_entities_fields_and_relations() -> None:
    d = domain("clinic-oas3.yaml")
    pets, owners = d["entities"]["pets"], d["entities"]["owners"]
    assert pets["per"]["entity"] == "owners"  # nested rows per parent
    assert pets["fields"]["ownerId"] == {"type": "ref", "ref": "owners"}
    assert pets["fields"]["vetId"]["ref"] == "vets"  # an id-valued field is a relation
    assert pets["fields"]["species"]["choices"] == ["dog", "cat", "rabbit", "parrot"]
    assert pets["fields"]["birthDate"]["type"] == "date"
    assert owners["fields"]["email"]["faker"] == "email"  # by format
    assert owners["fields"]["phone"]["faker"] == "phone_number"  # by name
    assert owners["fields"]["fullName"]["faker"] == "name"
    assert "expr" in owners["fields"]["createdAt"]  # date-time, deterministic from the row
    names = {a["name"] for a in d["actions"]}
    assert {"list_owners", "get_owner", "create_owner", "update_owner", "delete_owner"} <= names
    assert "vaccinate_pet" not in names
    text = {r["text"] for r in owners["refs"]}
    assert "the owner '{row.fullName}'" in text  # named, found by the `q` search parameter


def test_swagger2_body_form_and_definitions() -> None:
    d = domain("shop-swagger2.json")
    tools = {a["name"]: a for a in d["actions"]}
    assert set(tools["update_customer"]["params"]) == {"customer_id", "tier", "phone"}  # formData
    assert tools["update_customer"]["params"]["tier"]["enum"] == ["basic", "silver", "gold"]
    create = tools["create_customer"]["params"]
    assert create["name"]["required"] and create["email"]["required"]
    assert not create["phone"]["required"]
    assert create["name"]["max_length"] == 80
    assert d["entities"]["orders"]["per"]["entity"] == "customers"


def test_rpc_and_dotted_operation_ids() -> None:
    rpc = build_graph(load_document(read_document(SPECS / "queues-rpc.json"), "q"))
    queue = rpc.resources["queue"]
    assert queue.endpoints["get"].op.operation_id == "DescribeQueue"
    assert queue.endpoints["get"].id_param == "QueueId"
    assert rpc.resources["message"].parent == "queue"  # ListMessages(QueueId)
    assert rpc.resources["message"].endpoints["create"].op.operation_id == "SendMessage"
    dotted = build_graph(load_document(read_document(SPECS / "notes-google.json"), "n"))
    notebook = dotted.resources["notebook"]
    assert set(notebook.endpoints) == {"list", "get", "create", "update", "delete"}
    assert notebook.endpoints["update"].id_param == "name"


def test_scope_parameters_become_fixed_values() -> None:
    d = domain("vaults-azure.json")
    get = next(a for a in d["actions"] if a["name"] == "vaults_get")
    assert get["params"]["api_version"]["enum"] == ["2023-07-01"]
    assert len(get["params"]["subscriptionId"]["enum"]) == 1
    assert "subscriptionId" in d["persona"]
    secrets = d["entities"]["secrets"]
    assert secrets["per"]["entity"] == "vaults"  # vaults/{vaultName}/secrets
    assert "sku" in d["entities"]["vaults"]["fields"]  # properties.sku, flattened


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("malformed.yaml", "malformed"),
        ("not-an-api.json", "malformed"),
        ("swagger-1.json", "unsupported_construct"),
        ("external-ref.yaml", "unsupported_construct"),
        ("read-only.yaml", "no_writable_resource"),
    ],
)
def test_documents_skipped_with_a_reason(name: str, reason: str) -> None:
    with pytest.raises((SpecError, NoWorld)) as info:
        domain.__wrapped__(name)
    assert info.value.reason == reason  # type: ignore[union-attr]
    assert info.value.message  # type: ignore[union-attr]


def test_garbage_is_malformed_not_a_crash() -> None:
    for text in ("", "[1, 2]", "{{{", "openapi: 3.0.0\npaths: 7", "\x00\x01"):
        with pytest.raises(SpecError):
            load_document(parse_text(text), "x")


def test_names() -> None:
    assert words("displayName") == ["display", "name"]
    assert words("IdentityPools") == ["identity", "pools"]
    assert singular("categories") == "category" and singular("addresses") == "address"
    assert identifier("order") == "order_" and identifier("user-id") == "user_id"
    assert world_id("azure.com/mysql-Keys.json") == "azure-com-mysql-keys"


# -- REST semantics over the world state ------------------------------------------------------


def test_create_get_update_delete(clinic: Client) -> None:
    created = clinic.ok("create_owner", fullName="Ada Byron", email="ada@example.com", city="Oslo")
    assert created["id"].startswith("OWN-") and created["city"] == "Oslo"
    assert clinic.ok("get_owner", ownerId=created["id"])["email"] == "ada@example.com"
    clinic.ok("update_owner", ownerId=created["id"], city="Bergen")
    after = clinic.ok("get_owner", ownerId=created["id"])
    assert after["city"] == "Bergen" and after["fullName"] == "Ada Byron"  # a patch
    clinic.ok("delete_owner", ownerId=created["id"])
    gone = clinic("get_owner", ownerId=created["id"])
    assert gone.error is not None and gone.error.code == "not_found"


def test_validation_errors_name_the_field(clinic: Client) -> None:
    missing = clinic("create_owner", fullName="No Mail")
    assert missing.error is not None and missing.error.code == "invalid_arguments"
    assert missing.error.field == "email"
    bad = clinic("add_pet", ownerId="OWN-00001", name="Rex", species="dragon")
    assert bad.error is not None and bad.error.field == "species"
    assert "dog" in bad.error.message
    short = clinic("create_owner", fullName="A", email="a@b.co")
    assert short.error is not None and "at least 2" in short.error.message
    nothing = clinic("update_owner", ownerId="OWN-00001")
    assert nothing.error is not None and nothing.error.code == "invalid_arguments"


def test_nested_rows_belong_to_their_parent(clinic: Client) -> None:
    pet = clinic.rows("pets")[0]
    assert clinic.ok("get_pet", ownerId=pet["ownerId"], petId=pet["id"])["id"] == pet["id"]
    other = next(o["id"] for o in clinic.rows("owners") if o["id"] != pet["ownerId"])
    wrong = clinic("get_pet", ownerId=other, petId=pet["id"])
    assert wrong.error is not None and wrong.error.code == "not_found"
    ghost = clinic("add_pet", ownerId="OWN-99999", name="Rex", species="dog")
    assert ghost.error is not None and ghost.error.code == "not_found"
    bad_link = clinic("add_pet", ownerId=other, name="Rex", species="dog", vetId="VET-99999")
    assert bad_link.error is not None and bad_link.error.code == "not_found"


def test_delete_keeps_children(clinic: Client) -> None:
    owner = clinic.rows("pets")[0]["ownerId"]
    refused = clinic("delete_owner", ownerId=owner)
    assert refused.error is not None and refused.error.code == "rule_violation"
    assert refused.error.rule == "keep_children"


def test_list_filters_search_and_offset_pages(clinic: Client) -> None:
    owners = clinic.rows("owners")
    everyone = clinic.ok("list_owners", limit=100)
    assert [o["id"] for o in everyone] == [o["id"] for o in owners]
    assert len(clinic.ok("list_owners")) == 10  # the spec's default page size
    second = clinic.ok("list_owners", limit=5, offset=5)
    assert [o["id"] for o in second] == [o["id"] for o in owners[5:10]]
    city = owners[0]["city"]
    assert all(o["city"] == city for o in clinic.ok("list_owners", city=city, limit=100))
    word = owners[3]["fullName"].split()[-1]
    found = clinic.ok("list_owners", q=word.lower(), limit=100)
    assert owners[3]["id"] in [o["id"] for o in found]
    assert all(word.lower() in o["fullName"].lower() for o in found)


def test_page_number_pages_and_wrapped_lists(clinic: Client) -> None:
    owner = max(clinic.rows("owners"), key=lambda o: 0)["id"]
    pets = [p for p in clinic.rows("pets") if p["ownerId"] == owner]
    page = clinic.ok("list_pets", ownerId=owner, per_page=1, page=1)
    assert set(page) == {"data"}  # the spec's response wraps rows in `data`
    assert [p["id"] for p in page["data"]] == [p["id"] for p in pets[:1]]


def test_cursor_pages(shop: Client) -> None:
    customers = shop.rows("customers")
    first = shop.ok("list_customers", page_size=7)
    assert [c["id"] for c in first["data"]] == [c["id"] for c in customers[:7]]
    token = first["next_cursor"]
    second = shop.ok("list_customers", page_size=7, cursor=token)
    assert [c["id"] for c in second["data"]] == [c["id"] for c in customers[7:14]]
    bad = shop("list_customers", cursor="not-a-token")
    assert bad.error is not None and bad.error.code == "invalid_arguments"


def test_fixed_values_are_checked() -> None:
    env = world("vaults-azure.json")
    client = Client(env)
    vault = client.rows("vaults")[0]
    fixed = {k: v for k, v in env.spec.action("vaults_get").params.items() if v.enum}
    args = {k: p.enum[0] for k, p in fixed.items() if p.enum}
    assert client.ok("vaults_get", vaultName=vault["id"], **args)["id"] == vault["id"]
    wrong = client("vaults_get", vaultName=vault["id"], **{**args, "api_version": "2019-01-01"})
    assert wrong.error is not None and wrong.error.field == "api_version"


def test_generated_data_is_deterministic_and_realistic() -> None:
    a, b = world("clinic-oas3.yaml"), world.__wrapped__("clinic-oas3.yaml")
    assert a.world.base.hash == b.world.base.hash
    owners = Client(a).rows("owners")
    assert all("@" in o["email"] for o in owners)
    assert len({o["email"] for o in owners}) == len(owners)
    pets = Client(a).rows("pets")
    assert {p["species"] for p in pets} <= {"dog", "cat", "rabbit", "parrot"}
    assert all(0.1 <= p["weightKg"] <= 90 for p in pets if p["weightKg"] is not None)
