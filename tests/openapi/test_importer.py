"""The importer on hand-made documents: every construct it claims to read, and the REST
semantics of the tools it compiles, exercised through live episodes."""

from __future__ import annotations

from typing import Any

import pytest
from openapi_worlds import SPECS, Client, domain, world

from envfactory.episode.runner import run_episode
from envfactory.openapi.compile import compile_document
from envfactory.openapi.document import SpecError, load_document, parse_text, read_document
from envfactory.openapi.model import NoWorld
from envfactory.openapi.names import identifier, singular, words, world_id
from envfactory.openapi.resources import build_graph
from envfactory.policies.scripted import Oracle


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
        ("create-only.yaml", "no_tasks"),
        ("names-only.yaml", "no_tasks"),
        ("webhooks-only.yaml", "no_resources"),
    ],
)
def test_documents_skipped_with_a_reason(name: str, reason: str) -> None:
    with pytest.raises((SpecError, NoWorld)) as info:
        domain.__wrapped__(name)
    assert info.value.reason == reason  # type: ignore[union-attr]
    assert info.value.message  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("read-only.yaml", "reads only, through one operation (GET /stations)"),
        ("create-only.yaml", "only operations create new, unlinked rows (POST /payments, POST"),
        ("webhooks-only.yaml", "declares no operations (only webhooks"),
        ("names-only.yaml", "over its tags: no field to ask about or to set"),
    ],
)
def test_refusals_say_what_to_change(name: str, says: str) -> None:
    with pytest.raises(NoWorld) as info:
        domain.__wrapped__(name)
    assert says in info.value.message


def test_rpc_over_post_with_method_prefixed_ids() -> None:
    """``post-getAccountHolder`` on ``POST /getAccountHolder``: a get whose row is named by
    ``accountHolderCode`` in the body; ``post-closeAccountHolder`` is an action, left out."""
    graph = build_graph(load_document(read_document(SPECS / "accounts-rpc-post.json"), "acc"))
    holder, account = graph.resources["account_holder"], graph.resources["account"]
    assert set(graph.resources) == {"account_holder", "account"}
    assert set(holder.endpoints) == {"create", "get", "update"}
    assert holder.endpoints["get"].id_param == "accountHolderCode"
    assert account.endpoints["update"].id_param == "accountCode"
    assert account.parent == "account_holder"  # createAccount requires accountHolderCode
    assert graph.skipped["custom action or singleton"] == 2  # close, unSuspend
    names = {a["name"] for a in domain("accounts-rpc-post.json")["actions"]}
    assert {"post_get_account_holder", "post_update_account", "post_create_account"} <= names


def _rpc_doc(get_params: dict[str, Any], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    body = {"type": "object", "properties": get_params, "required": list(get_params)}
    config = {
        "type": "object",
        "properties": {"notificationId": {"type": "string"}, "notifyUrl": {"type": "string"}}
        | (extra or {}),
    }
    return {
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/getNotificationConfiguration": {
                "post": {
                    "operationId": "post-getNotificationConfiguration",
                    "requestBody": {"content": {"application/json": {"schema": body}}},
                    "responses": {
                        "200": {
                            "description": "ok",
                            "content": {"application/json": {"schema": config}},
                        }
                    },
                }
            }
        },
    }


def test_id_parameter_named_after_part_of_the_noun() -> None:
    """``notificationId`` names a notification configuration; a parameter naming nothing
    like it does not."""
    doc = load_document(_rpc_doc({"notificationId": {"type": "string"}}), "n")
    res = build_graph(doc).resources["notification_configuration"]
    assert res.endpoints["get"].id_param == "notificationId"
    graph = build_graph(load_document(_rpc_doc({"merchantAccount": {"type": "string"}}), "m"))
    assert not graph.resources and graph.skipped["no id parameter"] == 1


def test_reference_and_code_properties_are_relations() -> None:
    """``recurringDetailReference``, required to create a permit, makes recurring details its
    parent; an optional ``customerCode`` refers to customers; each entity's own
    ``...Reference`` / ``...Code`` is its id, not a field."""
    d = domain("permits-reference.yaml")
    permits = d["entities"]["permits"]
    assert permits["per"]["entity"] == "recurring_details"
    assert permits["fields"]["customerCode"]["ref"] == "customers"
    assert "recurringDetailReference" not in d["entities"]["recurring_details"]["fields"]
    assert "customerCode" not in d["entities"]["customers"]["fields"]


def test_actions_on_a_payment_link_to_it() -> None:
    """Adyen's ``/capture`` and ``/refund`` create rows, but each names the payment it acts
    on by ``originalReference`` (the ``pspReference`` that ``/authorise`` answers with): those
    rows link to payments, so held-out tasks act on payments that exist, one hop each."""
    d = domain("payments-modifications.yaml")
    for key in ("captures", "refunds"):
        assert d["entities"][key]["fields"]["originalReference"]["ref"] == "authorises"
    levels = {g["id"]: g["level"] for g in d["goals"]}
    assert levels["create_captures"] == levels["create_refunds"] == 1
    env = world("payments-modifications.yaml")
    for diff in env.difficulties:
        task = env.task("test", diff, 0)
        assert "authorise ATH-" in task.public.instruction
        assert run_episode(env, task, Oracle(), env.episode()).reward == 1.0


def test_short_strings_are_digits() -> None:
    """A string of at most four characters with no known shape (an expiry month) is drawn
    as digits, so the values a task sets fit the API's ``maxLength``."""
    fields = domain("payments-modifications.yaml")["entities"]["authorises"]["fields"]
    assert fields["expiryMonth"]["pattern"] == "##"
    assert fields["merchantAccount"]["faker"] == "word"


def test_combined_number_of_two_rows() -> None:
    """A two-read question: the sum of a number over two rows, each read by its id."""
    env = world("clinic-oas3.yaml")
    goal = next(g for g in domain("clinic-oas3.yaml")["goals"] if g["id"] == "sum_pets_weightkg")
    assert goal["level"] == 2 and len(goal["plan"]) == 2
    tasks = [env.task("train", 2, i) for i in range(40)]
    asked = [t for t in tasks if "combined weight kg" in t.public.instruction]
    assert asked
    for task in asked[:3]:
        assert run_episode(env, task, Oracle(), env.episode()).reward == 1.0


def _grants_doc() -> dict[str, Any]:
    grant = {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "fee": {"type": "integer", "minimum": 1, "maximum": 100},
            "total": {"type": "integer", "minimum": 10, "maximum": 5000},
        },
    }
    answer = {"200": {"description": "ok", "content": {"application/json": {"schema": grant}}}}
    many = {"type": "array", "items": grant}
    return {
        "openapi": "3.0.0",
        "info": {"title": "grants", "version": "1"},
        "paths": {
            "/grants": {
                "get": {
                    "operationId": "listGrants",
                    "responses": {
                        "200": {
                            "description": "ok",
                            "content": {"application/json": {"schema": many}},
                        }
                    },
                },
                "post": {
                    "operationId": "createGrant",
                    "requestBody": {"content": {"application/json": {"schema": grant}}},
                    "responses": answer,
                },
            },
            "/grants/{id}": {
                "get": {
                    "operationId": "getGrant",
                    "parameters": [
                        {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                    ],
                    "responses": answer,
                }
            },
        },
    }


def test_rows_no_list_shows_are_more() -> None:
    """Grants have no name, so no task lists them and the list is no tool of the world: the
    entity holds 150 rows, not the 100 one page of a list would show."""
    d = compile_document(_grants_doc(), "grants")
    assert "list_grants" not in {a["name"] for a in d["actions"]}
    assert d["entities"]["grants"]["count"] == 150


def test_read_only_world_asks_questions() -> None:
    """Two reads and nothing to write: a world whose tasks are questions the reads answer."""
    d = domain("airlines-read-only.yaml")
    kinds = {a["name"] for a in d["actions"]}
    assert kinds <= {"search_airlines", "get_airline", "list_routes", "get_route"}
    assert len(kinds) >= 3
    assert all("answer" in g for g in d["goals"])
    env = world("airlines-read-only.yaml")
    for diff in env.difficulties:
        task = env.task("test", diff, 0)
        assert task.hidden.answers and run_episode(env, task, Oracle(), env.episode()).reward == 1.0


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
